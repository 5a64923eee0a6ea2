/* cmd_check.c - mmzip check: verify structure and every CRC, say which readers can read the archive, and
 * what recover would change. */
#include "cli.h"

#include <string.h>

typedef struct {
    int quiet;
    unsigned errors, interop;
} tally;

static void report(const char *msg, void *ctx) {
    tally *t = ctx;
    cli_progress_done(); /* a finding gets a line of its own, not the end of the progress line */
    if (strncmp(msg, "error: ", 7) == 0) {
        t->errors++;
        fprintf(stderr, "%s\n", msg);
    } else if (strncmp(msg, "interop: ", 9) == 0) {
        t->interop++;
        if (!t->quiet) fprintf(stderr, "%s\n", msg);
    } else if (!t->quiet) {
        fprintf(stderr, "%s\n", msg);
    }
}

static void progress(uint64_t done, uint64_t total, void *ctx) {
    (void)ctx;
    cli_progress_bytes("check", done, total);
}

static int run(int argc, char **argv) {
    tally t = {0, 0, 0};
    const char *archive = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) t.quiet = 1;
        else if (argv[i][0] == '-') return cli_usage(&cmd_check, "unknown option");
        else if (!archive) archive = argv[i];
        else return cli_usage(&cmd_check, "too many arguments");
    }
    if (!archive) return cli_usage(&cmd_check, "missing ARCHIVE");
    if (cli_archive_name("check", archive, 0)) return EXIT_FAIL;
    mmzip_t *h;
    mmzip_options o;
    mmzip_options_init(&o);
    o.progress = progress;
    int st = mmzip_open(archive, "r", &o, &h);
    if (st) return cli_fail("check", st);
    cli_progress_start();
    st = mmzip_check(h, report, &t);
    cli_progress_done();
    size_t n = mmzip_count(h);
    mmzip_close(h);
    if (!t.quiet) {
        printf("%s: valid for mmzip: %s\n", archive, st ? "no" : "yes");
        printf("%s: valid for every ZIP reader: %s\n", archive,
               st || t.interop ? "no (see the error: and interop: lines)" : "yes");
    }
    if (st) return cli_fail("check", st);
    if (!t.quiet)
        printf("%s: OK, %zu entries, every local header and CRC-32 verified%s\n", archive, n,
               t.interop ? " (valid for mmzip, not for every ZIP reader)" : "");
    return EXIT_OK;
}

const command cmd_check = {
    "check", "verify the structure and every CRC-32; say who can read it and what recover would change",
    "usage: mmzip check [-q] ARCHIVE\n\n"
    "Verifies ARCHIVE without changing it: the end records and central directory, every local header\n"
    "against the directory, and every entry's CRC-32 (compressed entries are decoded). Standard error gets\n"
    "one line per finding, by kind:\n"
    "  error:    something mmzip cannot read (a wrong CRC-32, a missing local header, an unknown method);\n"
    "  interop:  something mmzip reads but some other ZIP reader refuses or reads differently (end records\n"
    "            not right after the directory, bytes after them, a 16-bit entry count that wrapped, names\n"
    "            that cannot be looked up, duplicate names, methods unzip lacks...);\n"
    "  recover:  what 'mmzip recover' (or any writable open, such as 'mmzip put') would do to the file, as a\n"
    "            dry run, naming the entry concerned: write an undo journal back (an in-place edit whose\n"
    "            writer was killed), keep an entry modified in place and recompute its CRC, cut an\n"
    "            interrupted mmzip write, move the directory back, or keep a foreign anomaly and append\n"
    "            after it; 'recover: nothing to do' when it would change nothing. Every error: that\n"
    "            recovery fixes says so and has its recover: line.\n"
    "Standard output then says whether the archive is valid for mmzip (no error:) and for every ZIP reader\n"
    "(no error: and no interop:).\n"
    "Exit status 0 if mmzip can read every entry, 1 if any error was found.\n\n"
    "  -q, --quiet  print only the error: lines\n",
    run};
