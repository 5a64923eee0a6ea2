/* util.c - error reporting, help and progress helpers shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_fail(const char *cmd, int status) {
    const char *msg = mmzip_last_error();
    fprintf(stderr, "mmzip %s: %s\n", cmd, *msg ? msg : mmzip_strerror(status));
    return status == MMZIP_EBUSY ? EXIT_BUSY : EXIT_FAIL;
}

int cli_archive_name(const char *cmd, const char *name, int create) {
    size_t cut;
    int st = mmzip_split_name(name, create ? MMZIP_NAME_CREATE : 0, &cut);
    if (st) return cli_fail(cmd, st);
    if (cut == strlen(name)) return EXIT_OK;
    fprintf(stderr, "mmzip %s: '%s' names the member '%s' of the archive '%.*s'; mmzip %s takes an archive "
            "(name the archive, and the member as an argument where the command takes one)\n", cmd, name,
            name + cut + 2, (int)cut, name, cmd);
    return EXIT_FAIL;
}

int cli_wants_help(const command *c, int argc, char **argv, int *exit_code) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(c->usage, stdout);
            *exit_code = EXIT_OK;
            return 1;
        }
    }
    return 0;
}

int cli_usage(const command *c, const char *why) {
    fprintf(stderr, "mmzip %s: %s\n%s", c->name, why, c->usage);
    return EXIT_USAGE;
}

int cli_unknown_option(const command *c, const char *option) {
    char why[300];
    snprintf(why, sizeof why, "unknown option '%.250s'", option);
    return cli_usage(c, why);
}

const char *cli_bytes(unsigned long long n, char *buf, size_t len) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0) snprintf(buf, len, "%llu B", n);
    else snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

/*
 * Progress: only on a terminal, and only once the command has run for $MMZIP_PROGRESS_DELAY seconds (1 by
 * default; 0 shows it from the start, which is how the tests see it without depending on speed), then at
 * most five lines a second, each overwriting the last.
 */
static int progress_on, progress_shown;
static double progress_t0, progress_last, progress_delay = 1.0;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_start(void) {
    progress_on = isatty(2);
    progress_t0 = now();
    const char *d = getenv("MMZIP_PROGRESS_DELAY");
    if (d && *d) {
        char *end;
        double v = strtod(d, &end);
        if (!*end && v >= 0) progress_delay = v;
    }
}

void cli_progress_line(const char *cmd, const char *text, double fraction) {
    if (!progress_on) return;
    double t = now();
    if (t - progress_t0 < progress_delay || (progress_shown && t - progress_last < 0.2)) return;
    if (fraction >= 0) fprintf(stderr, "\rmmzip %s: %s (%d%%)\033[K", cmd, text, (int)(fraction * 100));
    else fprintf(stderr, "\rmmzip %s: %s\033[K", cmd, text);
    progress_last = t;
    progress_shown = 1;
}

void cli_progress_bytes(const char *cmd, unsigned long long done, unsigned long long total) {
    if (!progress_on) return;
    char a[32], b[32], line[80];
    snprintf(line, sizeof line, "%s of %s", cli_bytes(done, a, sizeof a), cli_bytes(total, b, sizeof b));
    cli_progress_line(cmd, line, total ? (double)done / (double)total : -1);
}

void cli_progress_done(void) {
    if (progress_shown) fputs("\r\033[K", stderr);
    progress_shown = 0;
}

typedef struct {
    const char *cmd, *archive;
} warn_ctx;

static int warn_one(const mmzip_unfinished_edit *u, void *p) {
    warn_ctx *w = p;
    char b[32];
    if (u->kind == MMZIP_UNFINISHED_UNDO && u->writer_alive)
        fprintf(stderr, "mmzip %s: note: %s: entry '%s' is being edited in place by a writer now (undo journal "
                "%s.mmzip-undo); listings show its last commit, and its bytes can be read once that writer has "
                "closed it\n", w->cmd, w->archive, u->key, w->archive);
    else if (u->kind == MMZIP_UNFINISHED_UNDO)
        fprintf(stderr, "mmzip %s: warning: %s: entry '%s' awaits recovery: it was being edited in place when its "
                "writer was killed, and the undo journal %s.mmzip-undo (%s) holds its last committed version, "
                "which listings show; its bytes cannot be read until 'mmzip recover %s' (or any writable open) "
                "writes the journal back\n", w->cmd, w->archive, u->key, w->archive,
                cli_bytes(u->journal_bytes, b, sizeof b), w->archive);
    else if (u->writer_alive)
        fprintf(stderr, "mmzip %s: note: %s: entry '%s' is being modified in place by a writer now: its bytes "
                "change as it writes, and its CRC-32 is refreshed at its next commit\n", w->cmd, w->archive, u->key);
    else
        fprintf(stderr, "mmzip %s: warning: %s: entry '%s' awaits recovery: it was being modified in place when its "
                "writer was killed (its in-place marker says so), so its CRC-32 is stale and its bytes are as that "
                "writer left them; 'mmzip recover %s' (or any writable open) keeps them and recomputes the "
                "CRC\n", w->cmd, w->archive, u->key, w->archive);
    return 0;
}

int cli_warn_unfinished(const char *cmd, mmzip_t *h, const char *archive) {
    warn_ctx w = {cmd, archive};
    int n = mmzip_unfinished_edits(h, warn_one, &w);
    return n > 0 ? n : 0;
}

static void print_warning(const char *msg, void *ctx) { fprintf(stderr, "mmzip %s: %s\n", (const char *)ctx, msg); }

void cli_warn_fields(const char *cmd, mmzip_t *h) { mmzip_warnings(h, print_warning, (void *)cmd); }

int cli_parse_align(const command *c, const char *text, uint32_t *align) {
    char *end;
    errno = 0;
    unsigned long v = text[0] >= '0' && text[0] <= '9' ? strtoul(text, &end, 10) : 0;
    long page = sysconf(_SC_PAGESIZE);
    if (!v || errno || *end || v > (unsigned long)(page > 0 ? page : 4096) || (v & (v - 1))) {
        char why[120];
        snprintf(why, sizeof why, "--align N wants a power of two from 1 to the page size (%ld)",
                 page > 0 ? page : 4096);
        return cli_usage(c, why);
    }
    *align = (uint32_t)v;
    return 0;
}
