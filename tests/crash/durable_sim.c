/*
 * durable_sim.c - power-loss simulation of MMZIP_DURABLE.
 *
 * Runs a scenario ("basic", or the one named by the second argument: "edits" for in-place edits) in durable mode with the test build's I/O trace on, recording every write,
 * truncate and sync, and the moment each commit returned. Then:
 *
 *  1. checks the order of the flushes that docs/protocol.md prescribes: a relocation's directory copy and
 *     end records are flushed before anything else is written (the next writes may overwrite the
 *     old directory), the new entries and directory records are flushed before the commit point that
 *     publishes them (the truncate, or the in-place rewrite of the end records), and the commit point is
 *     flushed (fsync) before the commit returns;
 *  2. simulates a power loss after every operation, many times each: everything up to the last sync is on
 *     disk; of what came after, each 512-byte sector holds its content as of a random moment since that sync
 *     (the page cache writes back in any order), and the file size is its size as of another random moment.
 *     Recovery of every such image must give exactly the state of the last commit that returned, or of the
 *     one in flight - never anything older, never anything torn.
 *
 * With a third argument "shared" (CTest crash_durable_power_loss_shared), the scenario runs through a shared
 * writer (MMZIP_SHARED), and each image is repaired not by a writable open but by the transaction of a shared
 * writer that had the archive open before the power loss (docs/protocol.md §11: the next lock holder
 * repairs), whose view and the file must then both be the last returned commit or the one in flight.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenario.h"

typedef void (*mmzip_io_trace_fn)(void *ctx, int op, uint64_t off, const void *data, uint64_t len,
                                  const char *what);
void mmzip__set_io_trace(mmzip_io_trace_fn fn, void *ctx);
enum { OP_WRITE = 1, OP_TRUNCATE = 2, OP_DATASYNC = 3, OP_FULLSYNC = 4,
       /* the undo journal of in-place edits, a second file beside the archive */
       OP_JWRITE = 5, OP_JTRUNCATE = 6, OP_JSYNC = 7, OP_JREMOVE = 8, OP_JCREATE = 9, OP_RETURNED = 100 };

static const char *scenario = "basic";
static int shared_mode;

typedef struct {
    int op;
    uint64_t off, len;
    uint8_t *data; /* NULL for zeros */
    char what[48];
} rec;

static rec *ops;
static size_t n_ops, cap_ops;
static int failures, order_failures;

static void push(int op, uint64_t off, const void *data, uint64_t len, const char *what) {
    if (n_ops == cap_ops) {
        cap_ops = cap_ops ? cap_ops * 2 : 256;
        ops = realloc(ops, cap_ops * sizeof *ops);
    }
    rec *r = &ops[n_ops++];
    r->op = op;
    r->off = off;
    r->len = len;
    r->data = NULL;
    if ((op == OP_WRITE || op == OP_JWRITE) && data) {
        r->data = malloc(len ? len : 1);
        memcpy(r->data, data, len);
    }
    snprintf(r->what, sizeof r->what, "%s", what ? what : "");
}

static void trace(void *ctx, int op, uint64_t off, const void *data, uint64_t len, const char *what) {
    (void)ctx;
    push(op, off, data, len, what);
}

#define EXPECT(cond, ...)                                                                                    \
    do {                                                                                                    \
        if (!(cond)) {                                                                                      \
            fprintf(stderr, __VA_ARGS__);                                                                   \
            fputc('\n', stderr);                                                                            \
            failures++;                                                                                     \
        }                                                                                                   \
    } while (0)

static int is_sync(const rec *r) { return r->op == OP_DATASYNC || r->op == OP_FULLSYNC; }

static int sync_between(size_t a, size_t b) {
    for (size_t j = a + 1; j < b; j++)
        if (is_sync(&ops[j])) return 1;
    return 0;
}

static void check_flush_order(void) {
    size_t relocations = 0, commits = 0;
    for (size_t i = 0; i < n_ops; i++) {
        rec *r = &ops[i];
        if (strcmp(r->what, "relocate.directory_copy") == 0) {
            /* Nothing may be written (the old directory is free space now) until the copy is on disk. */
            for (size_t j = i + 1; j < n_ops && !is_sync(&ops[j]); j++)
                EXPECT(ops[j].op != OP_WRITE && ops[j].op != OP_TRUNCATE,
                       "op %zu (%s) changes the file before the relocated directory (op %zu) is flushed", j,
                       ops[j].what, i);
            relocations++;
        }
        if ((r->op == OP_TRUNCATE && strcmp(r->what, "commit.truncate") == 0) ||
            (r->op == OP_WRITE && strcmp(r->what, "commit.switch") == 0)) {
            /* Every write since the previous commit point is flushed before this one. */
            size_t j = i;
            while (j > 0 && !(ops[j - 1].op == OP_RETURNED)) j--;
            for (size_t k = j; k < i; k++)
                if (ops[k].op == OP_WRITE) EXPECT(sync_between(k, i), "op %zu (%s) is not flushed before the "
                                                                       "commit point (op %zu)", k, ops[k].what, i);
            size_t ret = i + 1;
            while (ret < n_ops && ops[ret].op != OP_RETURNED) ret++;
            int fsynced = 0;
            for (size_t k = i + 1; k < ret; k++)
                if (ops[k].op == OP_FULLSYNC) fsynced = 1;
            EXPECT(fsynced, "the commit point (op %zu) is not fsynced before the commit returns", i);
            commits++;
        }
    }
    /* Every overwrite of committed bytes by an in-place edit follows a flush of the journal record that
     * preserves them (the record comes after the journal's last reset). */
    size_t edits = 0;
    for (size_t i = 0; i < n_ops; i++) {
        if (strcmp(ops[i].what, "edit.write") != 0 && strcmp(ops[i].what, "edit.header") != 0) continue;
        long rec_at = -1;
        for (size_t j = i; j-- > 0;) {
            if (ops[j].op == OP_JTRUNCATE || ops[j].op == OP_JREMOVE) break;
            if (strcmp(ops[j].what, "edit.journal_record") == 0) {
                rec_at = (long)j;
                break;
            }
        }
        if (rec_at < 0) continue; /* bytes past the committed size: nothing to preserve */
        int synced = 0;
        for (size_t j = (size_t)rec_at + 1; j < i; j++)
            if (ops[j].op == OP_JSYNC) synced = 1;
        EXPECT(synced, "op %zu (%s) overwrites committed bytes before the journal record (op %ld) is flushed", i,
               ops[i].what, rec_at);
        edits++;
    }
    int editing = strcmp(scenario, "edits") == 0;
    EXPECT(relocations >= 2 && commits >= (editing ? 8u : 10u), "too few relocations (%zu) or commits (%zu) traced",
           relocations, commits);
    EXPECT(!editing || edits >= 20, "too few in-place writes traced (%zu)", edits);
    printf("flush order: %zu relocations, %zu commits and %zu in-place writes checked%s\n", relocations, commits,
           edits, failures ? ", FAILED" : "");
    order_failures = failures;
    failures = 0;
}

/* ---- images ------------------------------------------------------------------------------------------ */

typedef struct {
    uint8_t *b;
    uint64_t size, cap;
} image;

static void img_resize(image *m, uint64_t size) {
    if (size > m->cap) {
        uint64_t c = m->cap ? m->cap : 4096;
        while (c < size) c *= 2;
        m->b = realloc(m->b, c);
        memset(m->b + m->cap, 0, c - m->cap);
        m->cap = c;
    }
    if (size < m->size) memset(m->b + size, 0, m->size - size); /* truncated bytes read as zeros if regrown */
    m->size = size;
}

static void img_apply(image *m, const rec *r) {
    if (r->op == OP_TRUNCATE || r->op == OP_JTRUNCATE) {
        img_resize(m, r->off);
    } else if (r->op == OP_WRITE || r->op == OP_JWRITE) {
        if (r->off + r->len > m->size) img_resize(m, r->off + r->len);
        if (r->data) memcpy(m->b + r->off, r->data, r->len);
        else memset(m->b + r->off, 0, r->len);
    }
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int is_journal_op(int op) { return op >= OP_JWRITE && op <= OP_JCREATE; }

/*
 * What a power loss leaves of one file: `durable` (its state at its last sync) plus, of its operations in
 * ops[from, to), each 512-byte sector as of a random moment, and the size as of another.
 */
static void lossy_image(const image *durable, size_t from, size_t to, int journal, image *out) {
    size_t idx_cap = to - from + 1, nu = 0;
    size_t *idx = malloc(idx_cap * sizeof *idx);
    for (size_t j = from; j < to; j++)
        if (is_journal_op(ops[j].op) == journal && (ops[j].op == OP_WRITE || ops[j].op == OP_TRUNCATE ||
                                                     ops[j].op == OP_JWRITE || ops[j].op == OP_JTRUNCATE))
            idx[nu++] = j;
    memset(out, 0, sizeof *out);
    img_resize(out, durable->size);
    if (durable->size) memcpy(out->b, durable->b, durable->size);
    uint64_t size = durable->size;
    size_t size_at = nu ? (size_t)(rnd() % (nu + 1)) : 0;
    image scratch = {0};
    img_resize(&scratch, durable->size);
    if (durable->size) memcpy(scratch.b, durable->b, durable->size);
    uint64_t top = durable->size;
    for (size_t j = 0; j < nu; j++) {
        const rec *r = &ops[idx[j]];
        if ((r->op == OP_WRITE || r->op == OP_JWRITE) && r->off + r->len > top) top = r->off + r->len;
    }
    uint64_t nsec = (top + 511) / 512;
    uint32_t *moment = malloc((nsec ? nsec : 1) * sizeof *moment);
    for (uint64_t q = 0; q < nsec; q++) moment[q] = nu ? (uint32_t)(rnd() % (nu + 1)) : 0;
    img_resize(out, top);
    for (size_t j = 0; j < nu; j++) {
        const rec *r = &ops[idx[j]];
        img_apply(&scratch, r);
        if (j + 1 == size_at) size = scratch.size;
        if (r->op != OP_WRITE && r->op != OP_JWRITE) continue;
        for (uint64_t q = r->off / 512; q * 512 < r->off + r->len; q++)
            if (moment[q] == j + 1) {
                uint64_t lo = q * 512, hi = lo + 512 < scratch.size ? lo + 512 : scratch.size;
                if (hi > lo) memcpy(out->b + lo, scratch.b + lo, hi - lo);
            }
    }
    if (size_at == 0) size = durable->size;
    img_resize(out, size);
    free(moment);
    free(scratch.b);
    free(idx);
}

static int write_file(const char *path, const image *m) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || (m->size && write(fd, m->b, m->size) != (ssize_t)m->size)) return -1;
    close(fd);
    return 0;
}

/* Recovers the image in a file (and the journal image beside it, if any) and checks it holds state k or
 * k+1. Returns which, or -1. */
static int recover_image(const image *m, const image *journal, const char *path, int k) {
    char jpath[320];
    snprintf(jpath, sizeof jpath, "%s.mmzip-undo", path);
    unlink(jpath);
    mmzip_t *h, *next = NULL;
    if (shared_mode) {
        /* The next writer has the archive open (as it was, the previous image repaired) when the power goes;
         * the image is written into the same file, and its refresh (a transaction: lock, reload, repair). */
        mmzip_options o;
        mmzip_options_init(&o);
        o.flags |= MMZIP_SHARED;
        if (mmzip_open(path, "w+", &o, &next) != MMZIP_OK) {
            fprintf(stderr, "shared open failed: %s\n", mmzip_last_error());
            return -1;
        }
    }
    if (write_file(path, m) != 0 || (journal && write_file(jpath, journal) != 0)) return -2;
    if (next && mmzip_refresh(next) != MMZIP_OK) {
        fprintf(stderr, "the next shared writer's repair failed: %s\n", mmzip_last_error());
        mmzip_close(next);
        return -1;
    }
    if (mmzip_open(path, next ? "r" : "r+", NULL, &h) != MMZIP_OK) {
        fprintf(stderr, "recovery failed: %s\n", mmzip_last_error());
        if (next) mmzip_close(next);
        return -1;
    }
    int n = scenario_steps(scenario), got = -1;
    for (int j = k; j <= k + 1 && j <= n && got < 0; j++) {
        state s;
        scenario_state(scenario, j, &s);
        if (scenario_matches(h, &s, 0) && (!next || scenario_matches(next, &s, 0))) got = j;
        free(s.items);
    }
    if (got >= 0 && mmzip_check(h, NULL, NULL) != MMZIP_OK) got = -1;
    mmzip_close(h);
    if (next) mmzip_close(next);
    return got;
}

int main(int argc, char **argv) {
    char dir[] = "/tmp/mmzip-durable-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    int trials = argc > 1 ? atoi(argv[1]) : 12;
    if (argc > 2) scenario = argv[2];
    shared_mode = argc > 3 && strcmp(argv[3], "shared") == 0;
    if (scenario_steps(scenario) < 0) return 2;
    char path[300], work[300];
    snprintf(path, sizeof path, "%s/a.zip", dir);
    snprintf(work, sizeof work, "%s/image.zip", dir);

    /* The empty archive is the durable starting point; its creation is not part of the simulation. */
    mmzip_t *h;
    if (mmzip_open(path, "w", NULL, &h) != MMZIP_OK || mmzip_close(h) != MMZIP_OK) return 2;
    image base = {0};
    {
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        img_resize(&base, (uint64_t)ftell(f));
        fseek(f, 0, SEEK_SET);
        if (fread(base.b, 1, base.size, f) != base.size) return 2;
        fclose(f);
    }
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_DURABLE;
    if (shared_mode) o.flags |= MMZIP_SHARED;
    mmzip__set_io_trace(trace, NULL);
    if (mmzip_open(path, "r+", &o, &h) != MMZIP_OK) return 2;
    int steps = scenario_steps(scenario);
    for (int k = 1; k <= steps; k++) {
        if (scenario_apply(h, scenario, k) != MMZIP_OK) {
            fprintf(stderr, "step %d: %s\n", k, mmzip_last_error());
            return 2;
        }
        push(OP_RETURNED, (uint64_t)k, NULL, 0, "returned");
    }
    mmzip_close(h);
    mmzip__set_io_trace(NULL, NULL);
    printf("traced %zu operations\n", n_ops);

    check_flush_order();

    /* Power loss after each operation. The archive and the journal are two files: each keeps what its own
     * last sync made durable; the journal exists once its creation was made durable (the directory synced,
     * traced as JCREATE) and is gone once its removal was, and in between those moments either may be. */
    unsigned images = 0;
    image durable = {0}, jdurable = {0};
    img_resize(&durable, base.size);
    memcpy(durable.b, base.b, base.size);
    size_t last_sync = 0, jlast_sync = 0; /* operations of each file before these indices are on disk */
    int j_exists = 0, j_pending = 0;     /* durably created; created or written since, not yet durably */
    int returned = 0;
    for (size_t c = 0; c <= n_ops; c++) {
        if (c > 0) {
            rec *r = &ops[c - 1];
            if (r->op == OP_RETURNED) returned = (int)r->off;
            if (is_sync(r)) {
                for (size_t j = last_sync; j < c; j++)
                    if (!is_journal_op(ops[j].op)) img_apply(&durable, &ops[j]);
                last_sync = c;
            }
            if (r->op == OP_JWRITE || r->op == OP_JTRUNCATE) j_pending = 1;
            if (r->op == OP_JSYNC) {
                for (size_t j = jlast_sync; j < c; j++)
                    if (is_journal_op(ops[j].op)) img_apply(&jdurable, &ops[j]);
                jlast_sync = c;
            }
            if (r->op == OP_JCREATE) j_exists = 1, j_pending = 0;
            if (r->op == OP_JREMOVE) {
                j_exists = j_pending = 0;
                img_resize(&jdurable, 0);
                jlast_sync = c;
            }
        }
        size_t nu = c - (last_sync < jlast_sync ? last_sync : jlast_sync);
        for (int t = 0; t < (nu ? trials : 1); t++) {
            image m, jm;
            lossy_image(&durable, last_sync, c, 0, &m);
            lossy_image(&jdurable, jlast_sync, c, 1, &jm);
            int with_journal = j_exists || (j_pending && (rnd() & 1));
            int got = recover_image(&m, with_journal ? &jm : NULL, work, returned);
            EXPECT(got >= 0, "power loss after op %zu (%s), trial %d%s: recovery does not give state %d or %d", c,
                   c ? ops[c - 1].what : "start", t, with_journal ? " (journal present)" : "", returned,
                   returned + 1);
            images++;
            free(m.b);
            free(jm.b);
            if (failures > 5) goto done;
        }
    }
done:
    printf("power losses simulated: %u disk images recovered\n", images);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!getenv("MMZIP_KEEP_TMP") && system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
    if (failures) fprintf(stderr, "%d power loss(es) not recovered\n", failures);
    else printf("every image recovered to the last returned commit or the one in flight\n");
    if (order_failures) fprintf(stderr, "%d flush-order violation(s)\n", order_failures);
    return failures || order_failures ? 1 : 0;
}
