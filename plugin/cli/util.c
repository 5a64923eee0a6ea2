/* util.c - error reporting, help and progress helpers shared by the subcommands. */
#include "cli.h"

#include <string.h>
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

static int progress_shown;

void cli_progress(const char *what, unsigned long long done, unsigned long long total) {
    if (!isatty(2)) return;
    if (total) fprintf(stderr, "\r%s: %llu/%llu (%d%%)", what, done, total, (int)(done * 100 / total));
    else fprintf(stderr, "\r%s: %llu", what, done);
    progress_shown = 1;
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
